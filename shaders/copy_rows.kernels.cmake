# Row copies with offsets read from the device (KV-cache writes, row picks in replayed programs).
ls_kernel(copy_rows copy_rows.comp)
