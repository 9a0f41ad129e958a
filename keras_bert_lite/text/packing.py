class BertPacker: pass
