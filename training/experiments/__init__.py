"""One-off experiments, each named by the committed result file it writes (`docs/results/<name>.json`);
run one with `python -m training.experiments.<name>`. Nothing else imports them but tests and reports."""
