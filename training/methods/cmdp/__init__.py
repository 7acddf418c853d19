"""The CMDP primal-dual experiment (issue 16): the learner and controller live in `models/cmdp/`; see
docs/training/cmdp.md."""
