"""bench/peers.py's CPU per answered request: each server's row counts the processes that serve
it, not the bench's PostgreSQL and Redis idling beside oPodSync or the home server."""

from bench import peers


def test_each_servers_row_counts_its_own_processes_only() -> None:
    used = {"PHP and nginx": 2.0, "service": 4.0, "PostgreSQL": 1.0, "Redis": 0.5}
    rows = {}
    for name, own in peers.OWN_PROCESSES.items():
        measured = peers.Measured()
        measured.add_cpu(1, used, 1000, own)
        rows[name] = measured.described_cpu(1)

    assert rows[peers.PHP_S] == "PHP 2.00 = 2.00 ms"
    assert rows[peers.PHP_FPM] == "PHP and nginx 2.00 = 2.00 ms"
    assert rows[peers.SERVICE] == "PostgreSQL 1.00 + Redis 0.50 + gunicorn 4.00 = 5.50 ms"
    assert rows[peers.HOME] == "its gunicorn 4.00 = 4.00 ms"


def test_a_row_with_nothing_answered_is_not_measured() -> None:
    measured = peers.Measured()
    measured.add_cpu(4, {"service": 1.0}, 0, peers.OWN_PROCESSES[peers.SERVICE])
    assert measured.described_cpu(4) == "not measured"
