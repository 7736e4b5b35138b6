package atomicwriter

import (
	"io/fs"
	"syscall"
)

func fileUID(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Uid)
	}
	return -1
}
