"""An interrupted run's summary lists the checkpoints it kept as they are (issue 32): after pruning
(the last two and the best epoch) "epochs up to 5" read as if every epoch had a checkpoint."""

from __future__ import annotations

from burn_train import LearnerSummary


def test_the_hint_lists_the_kept_checkpoints_not_a_range():
    s = LearnerSummary(5, 1.0, "interrupted", checkpointed=[5, 1, 4], detail="stopped from the dashboard")
    assert s.resume_hint() == (
        "completed: epochs 1-5; checkpoints kept: epochs 1, 4, 5; resume from the checkpoint of epoch 5"
    )
    assert s.resume_hint() in str(s).splitlines()


def test_one_epoch_one_checkpoint_and_a_completed_run():
    one = LearnerSummary(1, 1.0, "interrupted by Ctrl-C", checkpointed=[1])
    assert (
        one.resume_hint()
        == "completed: epoch 1; checkpoints kept: epoch 1; resume from the checkpoint of epoch 1"
    )
    assert LearnerSummary(3, 1.0, "completed", checkpointed=[2, 3]).resume_hint() == ""
    assert LearnerSummary(3, 1.0, "interrupted", checkpointed=[]).resume_hint() == ""
