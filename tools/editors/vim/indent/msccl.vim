" Vim indent file for MSCCL (.msccl): one level per open (, [ or { at the end of the previous
" line, one level less for a line that starts with a closer. Statements need no `;`, so
" C indenting (cindent) does not fit: it would take every line for a continuation.
if exists('b:did_indent')
  finish
endif
let b:did_indent = 1

setlocal indentexpr=MscclIndent(v:lnum)
setlocal indentkeys=0{,0},0),0],!^F,o,O,e
setlocal nolisp nosmartindent nocindent autoindent
let b:undo_indent = 'setlocal indentexpr< indentkeys< lisp< smartindent< cindent< autoindent<'

if exists('*MscclIndent')
  finish
endif

" Text of line `lnum` without its // comment and string contents (so brackets in them do not count).
function! s:Code(lnum) abort
  let line = substitute(getline(a:lnum), '"\%([^"\\]\|\\.\)*"', '""', 'g')
  return substitute(line, '\s*//.*$', '', '')
endfunction

function! MscclIndent(lnum) abort
  let prev = prevnonblank(a:lnum - 1)
  if prev == 0
    return 0
  endif
  let ind = indent(prev)
  let code = s:Code(prev)
  " Net brackets opened on the previous line (a line like `} else {` opens one and closes one).
  let opened = len(substitute(code, '[^([{]', '', 'g')) - len(substitute(code, '[^)\]}]', '', 'g'))
  " A closer at the start of the previous line was already dedented by that line's own indent.
  if code =~# '^\s*[)\]}]'
    let opened += 1
  endif
  if opened > 0
    let ind += shiftwidth()
  elseif opened < 0
    " The end of a continuation such as `    b)`: back to the level of the line that opened it.
    let ind -= shiftwidth()
  endif
  if getline(a:lnum) =~# '^\s*[)\]}]'
    let ind -= shiftwidth()
  endif
  return ind < 0 ? 0 : ind
endfunction
