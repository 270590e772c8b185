"""Statistics and task helpers shared by the audits: pair-clustered bootstrap, (model, domain)
task runner."""
