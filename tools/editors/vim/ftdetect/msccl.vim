" .msccl files are MSCCL collective-communication algorithms (tools/editors/vim).
autocmd BufRead,BufNewFile *.msccl setfiletype msccl
