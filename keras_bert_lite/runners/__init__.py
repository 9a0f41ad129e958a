"""The command-line applications, apart from the library: each `kbl-*` command is a module here with its
settings (a job dataclass, one flag per field: `flags`), and the fine-tuning tasks are small classes in
`runners.tasks`. `cli` holds the console entry points; `common` and `finetune` the flow they share.

    kbl-vocab     runners.vocab       kbl-glue   runners.glue    kbl-squad  runners.squad
    kbl-pretrain  runners.pretrain    kbl-ner    runners.ner     kbl-swag   runners.swag
    kbl-export    runners.export
"""
