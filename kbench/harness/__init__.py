"""The harness: what drives targets over problems. The job runner (one case,
one realization, one target: inputs, call, verdict), the packed-B contract
cases, perf timing, tuning, the pytest plugin that the suites use, and the
mutation campaign that checks the suites themselves (mutants, mutbuild,
mutation).

May import: every layer below it (errors, native, judge, problems, peers,
targets, results)."""
