"""CarriesLeadingLines: a removed statement's blank lines and comments go to the
next statement of its body that stays."""

import textwrap

import libcst as cst

from tapeshift.migrate.engine.toolkit.removal import CarriesLeadingLines


class _DropMarked(CarriesLeadingLines, cst.CSTTransformer):
    """Removes every statement `drop()`."""

    def visit_Module(self, node: cst.Module) -> bool:
        self.note_siblings(node)
        return True

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if "drop()" in cst.Module([]).code_for_node(original_node):
            return self.remove_statement(original_node)
        return self.with_carried_lines(original_node, updated_node)

    def leave_ClassDef(self, original_node, updated_node):
        return self.with_carried_lines(original_node, updated_node)

    leave_FunctionDef = leave_ClassDef


def _run(text: str) -> str:
    return cst.parse_module(textwrap.dedent(text).lstrip("\n")).visit(_DropMarked()).code


def test_blank_lines_and_comments_go_to_the_next_statement():
    assert _run("""
        class A:
            pass


        a = A()

        # about b
        drop()
        print(a)
    """) == textwrap.dedent("""
        class A:
            pass


        a = A()

        # about b
        print(a)
    """).lstrip("\n")


def test_the_more_generous_blank_run_wins_and_the_comments_keep_their_spacing():
    assert _run("""
        x = 1


        # one
        drop()
        # two
        drop()

        # three
        def f():
            drop()
            return 1
    """) == textwrap.dedent("""
        x = 1


        # one
        # two

        # three
        def f():
            return 1
    """).lstrip("\n")


def test_a_last_statement_takes_its_lines_with_it():
    assert _run("""
        def f():
            y = 2
            # gone
            drop()
        z = 3
    """) == "def f():\n    y = 2\nz = 3\n"


def test_statements_removed_in_a_row_leave_the_larger_blank_run_not_the_sum():
    assert _run("""
        def f():
            return 1


        drop()

        drop()

        # the plot
        print(f())
    """) == textwrap.dedent("""
        def f():
            return 1


        # the plot
        print(f())
    """).lstrip("\n")
