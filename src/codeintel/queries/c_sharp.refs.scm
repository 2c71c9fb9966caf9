; Reference patterns for C#, after c_sharp.scm's definitions (see languages.rs), moved
; there from c_sharp.scm. Added for code-intel: base lists (inherit), using directives (import), member reads and any other use of a name (read). tree-sitter-tags keeps one tag per
; name, from the earliest pattern, so bindings (@ignore) and specific kinds come first and
; the catch-all reads last.

(parameter name: (identifier) @ignore)

(using_directive
  [
    (identifier) @name
    (qualified_name name: (identifier) @name)
  ]) @reference.import

(class_declaration (base_list (_) @name)) @reference.inherit

(interface_declaration (base_list (_) @name)) @reference.inherit

(object_creation_expression type: (identifier) @name) @reference.call

(object_creation_expression type: (generic_name (identifier) @name)) @reference.call

(type_parameter_constraints_clause (identifier) @name) @reference.type

(type_parameter_constraint (type type: (identifier) @name)) @reference.type

(variable_declaration type: (identifier) @name) @reference.type

(parameter type: (identifier) @name) @reference.type

(property_declaration type: (identifier) @name) @reference.type

(method_declaration returns: (identifier) @name) @reference.type

(invocation_expression
  function: [
    (identifier) @name
    (generic_name (identifier) @name)
    (member_access_expression name: (identifier) @name)
    (member_access_expression name: (generic_name (identifier) @name))
  ]) @reference.call

(member_access_expression name: (identifier) @name) @reference.read
(identifier) @name @reference.read
