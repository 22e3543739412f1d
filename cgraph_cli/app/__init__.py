"""The features, one module each, as the library offers them: the whole-program calls
(:mod:`.api`), diagrams, explanations, the page's walkthrough, worksheets, gradient checks,
checks for CI and the reports every command prints."""
