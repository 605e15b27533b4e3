"""The tree-sitter grammars codeask ships, loaded on first use, and what their node types mean."""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
from typing import Any

# language -> (grammar wheel's module, the function that returns its language pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "c_sharp": ("tree_sitter_c_sharp", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "bash": ("tree_sitter_bash", "language"),
    "yaml": ("tree_sitter_yaml", "language"),
    "toml": ("tree_sitter_toml", "language"),
    "json": ("tree_sitter_json", "language"),
    "hcl": ("tree_sitter_hcl", "language"),
}
CONFIG = frozenset({"yaml", "toml", "json", "hcl"})


@dataclass(frozen=True)
class Rules:
    """What one grammar's node types mean for search results."""

    scopes: frozenset[str]  # named definitions with a body: the chain of enclosing scopes
    values: frozenset[str] = frozenset()  # define a name without a body: constants, fields, macros
    imports: frozenset[str] = frozenset()
    decorators: frozenset[str] = frozenset()
    locals_query: str = ""  # tree-sitter query: @n captures a name assigned in a function


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_JS_SCOPES = _f(
    "function_declaration", "generator_function_declaration", "class_declaration",
    "abstract_class_declaration", "method_definition", "interface_declaration", "enum_declaration",
    "internal_module", "module", "type_alias_declaration",
)  # fmt: skip
_JS_VALUES = _f(
    "variable_declarator", "public_field_definition", "field_definition", "property_signature",
    "method_signature", "abstract_method_signature",
)  # fmt: skip
_JS_LOCALS = """
(variable_declarator name: (identifier) @n)
(assignment_expression left: (identifier) @n)
(augmented_assignment_expression left: (identifier) @n)
"""
_C_SCOPES = _f(
    "function_definition", "struct_specifier", "union_specifier", "enum_specifier",
    "preproc_function_def",
)  # fmt: skip
_C_VALUES = _f(
    "preproc_def", "declaration", "field_declaration", "enumerator", "type_definition",
)  # fmt: skip
_C_LOCALS = """
(init_declarator declarator: (identifier) @n)
(assignment_expression left: (identifier) @n)
(declaration declarator: (identifier) @n)
(parameter_declaration declarator: (identifier) @n)
(parameter_declaration declarator: (pointer_declarator declarator: (identifier) @n))
(init_declarator declarator: (pointer_declarator declarator: (identifier) @n))
"""

RULES: dict[str, Rules] = {
    "python": Rules(
        scopes=_f("function_definition", "class_definition"),
        values=_f("assignment"),
        imports=_f("import_statement", "import_from_statement", "future_import_statement"),
        decorators=_f("decorator"),
        locals_query="""
            (assignment left: (identifier) @n)
            (augmented_assignment left: (identifier) @n)
            (for_statement left: (identifier) @n)
            (default_parameter name: (identifier) @n)
            (typed_default_parameter name: (identifier) @n)
            (with_item value: (as_pattern alias: (as_pattern_target (identifier) @n)))
        """,
    ),
    "javascript": Rules(
        scopes=_JS_SCOPES,
        values=_JS_VALUES,
        imports=_f("import_statement"),
        decorators=_f("decorator"),
        locals_query=_JS_LOCALS,
    ),  # fmt: skip
    "typescript": Rules(
        scopes=_JS_SCOPES,
        values=_JS_VALUES,
        imports=_f("import_statement"),
        decorators=_f("decorator"),
        locals_query=_JS_LOCALS,
    ),  # fmt: skip
    "tsx": Rules(
        scopes=_JS_SCOPES,
        values=_JS_VALUES,
        imports=_f("import_statement"),
        decorators=_f("decorator"),
        locals_query=_JS_LOCALS,
    ),  # fmt: skip
    "go": Rules(
        scopes=_f("function_declaration", "method_declaration", "type_spec"),
        values=_f("const_spec", "var_spec", "field_declaration", "method_elem", "method_spec"),
        imports=_f("import_declaration"),
        locals_query="""
            (short_var_declaration left: (expression_list (identifier) @n))
            (assignment_statement left: (expression_list (identifier) @n))
            (var_spec name: (identifier) @n)
            (const_spec name: (identifier) @n)
            (range_clause left: (expression_list (identifier) @n))
        """,
    ),
    "java": Rules(
        scopes=_f(
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
            "method_declaration",
            "constructor_declaration",
        ),  # fmt: skip
        values=_f("variable_declarator", "enum_constant", "constant_declaration"),
        imports=_f("import_declaration"),
        decorators=_f("annotation", "marker_annotation"),
        locals_query="""
            (variable_declarator name: (identifier) @n)
            (assignment_expression left: (identifier) @n)
        """,
    ),
    "c": Rules(
        scopes=_C_SCOPES, values=_C_VALUES, imports=_f("preproc_include"), locals_query=_C_LOCALS
    ),
    "cpp": Rules(
        scopes=_C_SCOPES | _f("class_specifier", "namespace_definition"),
        values=_C_VALUES | _f("alias_declaration"),
        imports=_f("preproc_include", "using_declaration"),
        locals_query=_C_LOCALS,
    ),
    "c_sharp": Rules(
        scopes=_f(
            "class_declaration",
            "struct_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "namespace_declaration",
            "file_scoped_namespace_declaration",
            "method_declaration",
            "constructor_declaration",
            "property_declaration",
            "local_function_statement",
            "operator_declaration",
            "destructor_declaration",
        ),  # fmt: skip
        values=_f("variable_declarator", "enum_member_declaration"),
        imports=_f("using_directive"),
        decorators=_f("attribute_list"),
        locals_query="""
            (variable_declarator name: (identifier) @n)
            (assignment_expression left: (identifier) @n)
        """,
    ),
    "rust": Rules(
        scopes=_f(
            "function_item",
            "impl_item",
            "struct_item",
            "enum_item",
            "trait_item",
            "mod_item",
            "macro_definition",
            "union_item",
        ),  # fmt: skip
        values=_f(
            "const_item",
            "static_item",
            "field_declaration",
            "enum_variant",
            "type_item",
            "function_signature_item",
        ),  # fmt: skip
        imports=_f("use_declaration", "extern_crate_declaration"),
        decorators=_f("attribute_item"),
        locals_query="""
            (let_declaration pattern: (identifier) @n)
            (assignment_expression left: (identifier) @n)
            (compound_assignment_expr left: (identifier) @n)
        """,
    ),
    "ruby": Rules(
        scopes=_f("method", "singleton_method", "class", "module", "singleton_class"),
        values=_f("assignment"),
        locals_query="""
            (assignment left: (identifier) @n)
            (operator_assignment left: (identifier) @n)
        """,
    ),
    "php": Rules(
        scopes=_f(
            "class_declaration",
            "interface_declaration",
            "trait_declaration",
            "enum_declaration",
            "function_definition",
            "method_declaration",
        ),  # fmt: skip
        values=_f("const_element", "property_element"),
        imports=_f(
            "namespace_use_declaration",
            "require_once_expression",
            "require_expression",
            "include_expression",
            "include_once_expression",
        ),  # fmt: skip
        decorators=_f("attribute_list"),
        locals_query="(assignment_expression left: (variable_name) @n)",
    ),
    "bash": Rules(
        scopes=_f("function_definition", "case_item"),  # a case arm labels what runs in it
        values=_f("variable_assignment"),
        locals_query="(variable_assignment name: (variable_name) @n)",
    ),
    "hcl": Rules(scopes=frozenset()),
    "yaml": Rules(scopes=frozenset()),
    "toml": Rules(scopes=frozenset()),
    "json": Rules(scopes=frozenset()),
}

# Across grammars: nodes whose body is a function's (a name assigned inside is a local, not a definition).
FUNCTIONS = _f(
    "function_definition", "function_declaration", "generator_function_declaration",
    "method_definition", "arrow_function", "function_expression", "function", "method_declaration",
    "constructor_declaration", "func_literal", "lambda_expression", "local_function_statement",
    "lambda", "accessor_declaration", "function_item", "closure_expression", "method",
    "singleton_method", "anonymous_function", "anonymous_function_creation_expression",
    "do_block",
)  # fmt: skip
# Nodes that hold statements: a statement is a child of one of these.
CONTAINERS = _f(
    "block", "compound_statement", "statement_block", "body_statement", "declaration_list",
    "class_body", "statement_list", "do_group", "module", "program", "translation_unit",
    "source_file", "field_declaration_list", "switch_body", "constructor_body", "enum_body",
    "interface_body", "compilation_unit", "switch_section", "expression_case", "default_case",
    "communication_case", "type_case", "switch_block_statement_group", "switch_block",
    "match_block", "then", "else", "do", "begin", "enum_variant_list", "field_initializer_list", "object_type", "document",
    "stream", "body", "class_declaration_body", "ensure", "rescue", "case_statement",
    "jsx_element", "jsx_expression",
)  # fmt: skip
STRINGS = _f(
    "string", "string_literal", "raw_string_literal", "template_string", "interpreted_string_literal",
    "char_literal", "character_literal", "heredoc_body", "heredoc_content", "encapsed_string",
    "nowdoc", "nowdoc_body", "verbatim_string_literal", "interpolated_string_expression",
    "text_block", "concatenated_string", "string_content", "raw_string", "ansi_c_string",
    "translated_string", "string_fragment", "system_lib_string", "jsx_text", "regex",
)  # fmt: skip
CALLS = _f(
    "call", "call_expression", "method_invocation", "invocation_expression",
    "function_call_expression", "member_call_expression", "scoped_call_expression",
    "nullsafe_member_call_expression", "macro_invocation", "command", "new_expression",
    "object_creation_expression",
)  # fmt: skip
# Statements that set a value; a match inside one (not in a call's arguments) is a write.
ASSIGNMENTS = _f(
    "assignment", "augmented_assignment", "assignment_expression",
    "augmented_assignment_expression", "compound_assignment_expr", "assignment_statement",
    "short_var_declaration", "init_declarator", "operator_assignment", "update_expression",
)  # fmt: skip
CALLEE_FIELDS = ("function", "method", "name", "macro", "constructor", "type")
NAMES = _f(
    "identifier", "field_identifier", "type_identifier", "property_identifier", "constant",
    "name", "variable_name", "word", "qualified_identifier", "destructor_name", "operator_name",
    "simple_identifier", "private_property_identifier", "namespace_identifier",
    "scoped_identifier", "shorthand_property_identifier", "command_name",
)  # fmt: skip

_lock = threading.Lock()
_languages: dict[str, Any] = {}
_queries: dict[str, Any] = {}


def _unlock_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it when an index worker was forked


os.register_at_fork(after_in_child=_unlock_after_fork)


def has_grammar(language: str | None) -> bool:
    return language in GRAMMARS


def load(language: str) -> Any:
    """The tree_sitter.Language for a language name; the grammar wheel is imported on first use."""
    with _lock:
        lang = _languages.get(language)
        if lang is None:
            import tree_sitter

            module, function = GRAMMARS[language]
            lang = tree_sitter.Language(getattr(importlib.import_module(module), function)())
            _languages[language] = lang
        return lang


def locals_query(language: str) -> Any | None:
    """The compiled query for names assigned inside functions, or None when the language has none."""
    source = RULES[language].locals_query
    if not source:
        return None
    with _lock:
        if language not in _queries:
            import tree_sitter

            _queries[language] = tree_sitter.Query(_languages[language], source)
        return _queries[language]
