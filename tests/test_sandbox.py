from harness.judge.sandbox import BoundedLog


def test_bounded_log_keeps_head_and_tail():
    log = BoundedLog(20)
    for i in range(100):
        log.feed(f"{i:03d}".encode())
    text = log.text()
    assert text.startswith("0000010020")  # the first 10 bytes
    assert text.endswith("6097098099")  # the last 10 bytes
    assert "280 bytes of output dropped" in text


def test_short_output_is_kept_whole():
    log = BoundedLog(100)
    log.feed(b"hello ")
    log.feed(b"world")
    assert log.text() == "hello world"
