// Generated from the op declarations in dialects/loop.py; do not edit.
irdl.dialect @loop {
  irdl.attribute @iterator {
    %kind = irdl.base "#builtin.string"
    irdl.parameters(kind: %kind)
  }
}
