"""What every test module shares: the test process's signals as a terminal's."""

import signal

# Started in the background by a shell without job control (`nohup make test &`, a CI step run
# that way), the test process inherits SIGINT ignored, and every program the tests start would
# inherit it too: the tests that stop a run with Ctrl-C would see it ignored. Restored here, the
# programs start with SIGINT at its default, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
