// Lexer of the .msccl language (docs/language.md). Target-neutral: no actions, no members.
// Newlines are tokens (NL); the parse wrapper (compiler/lib/frontend/Parser.cpp) drops the NL
// tokens that occur inside (...) and [...] and collapses runs of NL, so the parser only sees
// NL where it may end a statement (and inside {...} map literals, which the parser allows).
lexer grammar MscclLexer;

// Keywords.
PARAM    : 'param' ;
IMPORT   : 'import' ;
FN       : 'fn' ;
PROGRAM  : 'program' ;
LET      : 'let' ;
FOR      : 'for' ;
IN       : 'in' ;
IF       : 'if' ;
ELSE     : 'else' ;
WITH     : 'with' ;
RETURN   : 'return' ;
BREAK    : 'break' ;
CONTINUE : 'continue' ;
AND      : 'and' ;
OR       : 'or' ;
NOT      : 'not' ;
TRUE     : 'true' ;
FALSE    : 'false' ;
NONE     : 'none' ;

// Integers: decimal or hex, `_` separators, optional power-of-1024 size suffix.
INT : ( DEC_DIGITS | HEX_DIGITS ) SIZE_SUFFIX? ;
fragment DEC_DIGITS  : [0-9] [0-9_]* ;
fragment HEX_DIGITS  : '0' [xX] [0-9a-fA-F_]+ ;
fragment SIZE_SUFFIX : 'KiB' | 'MiB' | 'GiB' | 'K' | 'M' | 'G' ;

STRING : '"' ( ~["\\\r\n] | '\\' ~[\r\n] )* '"' ;
// A string that reaches the end of the line; the parse wrapper reports it.
UNTERMINATED_STRING : '"' ( ~["\\\r\n] | '\\' ~[\r\n] )* ;

ID : [A-Za-z_] [A-Za-z0-9_]* ;

// Operators and punctuation.
STARSTAR : '**' ;
SHL      : '<<' ;
SHR      : '>>' ;
AMP      : '&' ;
PIPE     : '|' ;
CARET    : '^' ;
PLUSEQ   : '+=' ;
MINUSEQ  : '-=' ;
STAREQ   : '*=' ;
EQEQ     : '==' ;
NE       : '!=' ;
LE       : '<=' ;
GE       : '>=' ;
LT       : '<' ;
GT       : '>' ;
ASSIGN   : '=' ;
PLUS     : '+' ;
MINUS    : '-' ;
STAR     : '*' ;
SLASH    : '/' ;
PERCENT  : '%' ;
LPAREN   : '(' ;
RPAREN   : ')' ;
LBRACK   : '[' ;
RBRACK   : ']' ;
LBRACE   : '{' ;
RBRACE   : '}' ;
COMMA    : ',' ;
COLON    : ':' ;
SEMI     : ';' ;
DOT      : '.' ;

LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
// A block comment that never ends (contains no `*/`, so it never wins over BLOCK_COMMENT as
// the longer match); the parse wrapper reports it.
UNTERMINATED_COMMENT : '/*' ( ~'*' | '*'+ ~[*/] )* '*'* EOF ;
NL : '\r'? '\n' ;
WS : [ \t\f]+ -> skip ;
