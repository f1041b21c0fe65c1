"""An import's batches made to fail part-way, as a bug, a time limit or a killed worker would."""

from typing import Any


def third_batch_raises(monkeypatch: Any, error: BaseException) -> None:
    """The import writes in batches of 10, and its third batch raises `error`."""
    from episodes import services as episodes_services
    from imports import services

    monkeypatch.setattr(services, "BATCH", 10)
    upload_actions = episodes_services.actions_upload
    calls = []

    def raising_on_the_third(**kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 2:
            raise error
        return upload_actions(**kwargs)

    monkeypatch.setattr(episodes_services, "actions_upload", raising_on_the_third)
