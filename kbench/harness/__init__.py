"""The harness: what drives targets over problems. The job runner (one case,
one realization, one target: inputs, call, verdict), the packed-B contract
cases, perf timing, tuning, and the pytest plugin that the suites use.

May import: every layer below it (errors, native, judge, problems, peers,
targets, results)."""
