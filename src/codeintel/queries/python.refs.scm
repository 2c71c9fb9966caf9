; Reference patterns for Python, after python.scm's definitions (see languages.rs).
; Origin of the call pattern: tree-sitter-python 0.25.0, queries/tags.scm (MIT licence).
; Added for code-intel: each use of a name carries its kind: decorator, call, inherit
; (a base class), import, type (an annotation) and read (any other use as a value, such as
; an argument, the right side of an assignment or an attribute read). Names that are
; bound here rather than used (parameters, assignment targets, keyword argument names)
; are @ignore'd first. tree-sitter-tags keeps one tag per name, from the earliest
; pattern, so the specific kinds come before the catch-all reads.

(parameters (identifier) @ignore)
(lambda_parameters (identifier) @ignore)
(default_parameter name: (identifier) @ignore)
(typed_parameter . (identifier) @ignore)
(typed_default_parameter name: (identifier) @ignore)
(list_splat_pattern (identifier) @ignore)
(dictionary_splat_pattern (identifier) @ignore)
(keyword_argument name: (identifier) @ignore)
(assignment left: (identifier) @ignore)
(augmented_assignment left: (identifier) @ignore)
(for_statement left: (identifier) @ignore)
(for_in_clause left: (identifier) @ignore)
(as_pattern alias: (as_pattern_target (identifier) @ignore))
(global_statement (identifier) @ignore)
(nonlocal_statement (identifier) @ignore)

(decorator
  [
    (identifier) @name
    (attribute attribute: (identifier) @name)
  ]) @reference.decorator

(decorator
  (call
    function: [
      (identifier) @name
      (attribute attribute: (identifier) @name)
    ])) @reference.decorator

(call
  function: [
      (identifier) @name
      (attribute
        attribute: (identifier) @name)
  ]) @reference.call

(class_definition
  superclasses: (argument_list
    [
      (identifier) @name @reference.inherit
      (attribute attribute: (identifier) @name) @reference.inherit
    ]))

(import_from_statement
  name: (dotted_name (identifier) @name) @reference.import)

(import_from_statement
  name: (aliased_import name: (dotted_name (identifier) @name) @reference.import))

(import_from_statement
  module_name: (dotted_name (identifier) @name) @reference.import)

(import_statement
  name: (dotted_name (identifier) @name) @reference.import)

(import_statement
  name: (aliased_import name: (dotted_name (identifier) @name) @reference.import))

(type (identifier) @name) @reference.type
(type (attribute attribute: (identifier) @name)) @reference.type
(generic_type (identifier) @name) @reference.type

(attribute
  attribute: (identifier) @name) @reference.read

(identifier) @name @reference.read
