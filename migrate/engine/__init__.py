"""The engine: one file through the rules (pipeline), many files (batch), the
rule base class and registry, findings, positions, and the CST toolkit the
rules and checks share (:mod:`tapeshift.migrate.engine.toolkit`)."""
