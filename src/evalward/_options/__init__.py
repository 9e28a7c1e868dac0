"""Every option of evalward defined once: its field says its type, default and validation; its `Option` says
its flag, variable, settings key, Action input and help (`_options.option`). The families live in
`_options.run_values` and `_options.families` (`evalward ci`'s own in `_ci.ci_values`); `_options.run_options`
turns run values into the pipeline's `RunOptions`, for every entry point."""
