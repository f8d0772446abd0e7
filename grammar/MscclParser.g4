// Parser of the .msccl language (docs/language.md). Target-neutral: no actions, no members.
// Statements end at a newline (NL) or `;`. The parse wrapper removes NL inside (...) and [...].
parser grammar MscclParser;

options { tokenVocab = MscclLexer; }

// ---- Files ----------------------------------------------------------------------------
file : sep* ( topItem ( sep+ topItem )* )? sep* EOF ;

sep : NL | SEMI ;

topItem
  : IMPORT STRING                                              # importDecl
  | PARAM ID ASSIGN expr                                       # paramDecl
  | FN ID LPAREN paramList? RPAREN block                       # fnDecl
  | PROGRAM ID LPAREN optionList? RPAREN block                 # programDecl
  ;

paramList  : paramItem ( COMMA paramItem )* COMMA? ;
paramItem  : ID ( ASSIGN expr )? ;
optionList : option ( COMMA option )* COMMA? ;
option     : ID ASSIGN expr ;

// ---- Statements -----------------------------------------------------------------------
block : LBRACE sep* ( stmt ( sep+ stmt )* )? sep* RBRACE ;

stmt
  : LET ID ASSIGN expr                                         # letStmt
  | LET LPAREN idList RPAREN ASSIGN expr                       # letTupleStmt
  | FOR ID IN expr block                                       # forStmt
  | FOR LPAREN idList RPAREN IN expr block                     # forTupleStmt
  | ifChain                                                    # ifStmt
  | WITH expr block                                            # withStmt
  | RETURN expr?                                               # returnStmt
  | BREAK                                                      # breakStmt
  | CONTINUE                                                   # continueStmt
  | expr assignOp expr                                         # assignStmt
  | expr                                                       # exprStmt
  ;

idList   : ID ( COMMA ID )* COMMA? ;
ifChain  : IF expr block ( NL* ELSE ( ifChain | block ) )? ;
assignOp : ASSIGN | PLUSEQ | MINUSEQ | STAREQ ;

// ---- Expressions (Python precedence, lowest first) ---------------------------------------
expr       : orExpr ( IF orExpr ELSE expr )? ;
orExpr     : andExpr ( OR andExpr )* ;
andExpr    : notExpr ( AND notExpr )* ;
notExpr    : NOT notExpr | comparison ;
comparison : bitOr ( compOp bitOr )* ;
compOp     : EQEQ | NE | LT | LE | GT | GE | IN | NOT IN ;
bitOr      : bitXor ( PIPE bitXor )* ;
bitXor     : bitAnd ( CARET bitAnd )* ;
bitAnd     : shift ( AMP shift )* ;
shift      : arith ( ( SHL | SHR ) arith )* ;
arith      : term ( ( PLUS | MINUS ) term )* ;
term       : unary ( ( STAR | SLASH | PERCENT ) unary )* ;
unary      : ( MINUS | PLUS ) unary | power ;
power      : postfix ( STARSTAR unary )? ;
postfix    : primary trailer* ;

trailer
  : LPAREN argList? RPAREN                                     # callTrailer
  | LBRACK subscript RBRACK                                    # indexTrailer
  | DOT ( ID | NONE )                                          # attrTrailer
  ;

argList : arg ( COMMA arg )* COMMA? ;
arg     : ( ID ASSIGN )? expr ;

subscript
  : lo=expr? COLON hi=expr? ( COLON step=expr? )?              # sliceSubscript
  | expr ( COMMA expr )* COMMA?                                # exprSubscript
  ;

primary
  : INT                                                        # intLit
  | STRING                                                     # stringLit
  | TRUE                                                       # trueLit
  | FALSE                                                      # falseLit
  | NONE                                                       # noneLit
  | ID                                                         # nameRef
  | LPAREN RPAREN                                              # emptyTuple
  | LPAREN expr RPAREN                                         # parenExpr
  | LPAREN expr COMMA ( expr ( COMMA expr )* COMMA? )? RPAREN  # tupleLit
  | LBRACK ( expr ( COMMA expr )* COMMA? )? RBRACK             # listLit
  | LBRACE NL* ( mapEntry ( NL* COMMA NL* mapEntry )* NL* COMMA? )? NL* RBRACE  # mapLit
  ;

mapEntry : expr NL* COLON NL* expr ;
