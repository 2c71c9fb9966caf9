; Reference patterns for Ruby, after ruby.scm's definitions (see languages.rs), moved
; there from ruby.scm. Added for code-intel: superclasses (inherit); every other use of a name stays a call, as Ruby has no other way to name a method. tree-sitter-tags keeps one tag per
; name, from the earliest pattern, so bindings (@ignore) and specific kinds come first and
; the catch-all reads last.

(superclass
  [
    (constant) @name
    (scope_resolution name: (constant) @name)
  ]) @reference.inherit

(call method: (identifier) @name) @reference.call

(
  [(identifier) (constant)] @name @reference.call
  (#is-not? local)
  (#not-match? @name "^(lambda|load|require|require_relative|__FILE__|__LINE__)$")
)
