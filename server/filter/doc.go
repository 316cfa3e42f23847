// Package filter compiles and evaluates RocketMQ's SQL92 message selectors
// (ExpressionType SQL92): the language of the filter module's
// SelectorParser.jj, evaluated against a message's properties as the
// broker's ExpressionMessageFilter does.
//
// # Language
//
//	expr     := or
//	or       := and  { OR and }
//	and      := eq   { AND eq }
//	eq       := cmp  { ("=" | "<>") cmp | IS NULL | IS NOT NULL }
//	cmp      := unary { (">" | ">=" | "<" | "<=") unary
//	                  | [NOT] BETWEEN unary AND unary
//	                  | [NOT] IN "(" 'str' { "," 'str' } ")"
//	                  | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) 'str' }
//	unary    := "+" unary | "-" unary | NOT unary | primary
//	primary  := literal | name | "(" or ")"
//	literal  := 'str' | 123 | 123L | 1.5 | .5 | 1E3 | TRUE | FALSE | NULL
//
// Keywords are case-insensitive; names are [A-Za-z_$][A-Za-z0-9_$]* and
// name message properties (TAGS, KEYS and user properties alike); strings
// are single-quoted, a quote inside doubled. "--" comments run to a line end,
// and /* */ comments may appear anywhere.
//
// # Semantics (RocketMQ's, kept on purpose)
//
// Property values are strings. Comparing one with a number converts it to
// the number's type (Java's Integer, Long or Double parsing); a value that
// does not convert makes the whole expression fail, which never matches.
// A missing property is NULL and makes comparisons unknown: a message
// matches only when the expression is TRUE (three-valued logic). NOT binds
// tighter than comparisons, so "NOT a = 1" is "(NOT a) = 1": write
// "NOT (a = 1)". Ordering comparisons take only numbers and properties;
// IN lists take only strings; "= NULL" is refused (use IS NULL); a float
// literal 0 is refused (Java's createFloat). As in SelectorParser, tokens
// after a complete expression are ignored ("a = 1 b" is "a = 1").
//
// A compiled Expression is immutable and safe for concurrent use; Match
// does not allocate.
package filter
