"""Results: what a run leaves behind. Run folders (results.csv, run.json,
verdict lines), the history database, comparison and the regression gate,
summaries, and the HTML/CSV report (with a mutation campaign's tables).

May import: kbench.errors, kbench.native, kbench.judge, kbench.problems,
kbench.peers, kbench.targets."""
