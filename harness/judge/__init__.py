"""The trusted side inside a job: the judge process forks the runner, generates the inputs, keeps the
reference outputs, checks and times every call with its own clock, and writes the verdict. It may reach the
runner's modules (to fork it, or to drive a ``lang: cu`` module in its own process) but never the host's."""
