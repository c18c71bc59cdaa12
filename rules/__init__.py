"""verl-lint's knowledge tables (YAML), installed as the package `verl_lint_knowledge`.

Read with `verl_lint.data.load_table`; nothing here is code."""
