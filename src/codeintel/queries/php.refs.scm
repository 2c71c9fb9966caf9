; Reference patterns for PHP, after php.scm's definitions (see languages.rs), moved
; there from php.scm. Added for code-intel: `extends` (inherit), `use` clauses (import), member reads and any other use of a name (read). tree-sitter-tags keeps one tag per
; name, from the earliest pattern, so bindings (@ignore) and specific kinds come first and
; the catch-all reads last.

(base_clause [(name) @name (qualified_name (name) @name)]) @reference.inherit

(namespace_use_clause [(name) @name (qualified_name (name) @name)]) @reference.import

(class_interface_clause [(name) (qualified_name)] @name) @reference.inherit

(object_creation_expression
  [
    (name) @name
    (qualified_name (name) @name)
    (variable_name (name) @name)
  ]) @reference.call

(function_call_expression
  function: [
    (name) @name
    (qualified_name (name) @name)
    (variable_name (name)) @name
  ]) @reference.call

(scoped_call_expression
  name: (name) @name) @reference.call

(member_call_expression
  name: (name) @name) @reference.call

(nullsafe_member_call_expression
  name: (name) @name) @reference.call

(member_access_expression name: (name) @name) @reference.read
(name) @name @reference.read
