package etcd

import (
	"sync/atomic"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// quietLogger is etcd's error-level logger minus the errors that an embedded
// single node reports in normal operation: its listeners failing while it is
// being closed, and the storage-version monitor racing the first election.
func quietLogger(closing *atomic.Bool) (*zap.Logger, error) {
	cfg := logutil.DefaultZapLoggerConfig
	cfg.Level = zap.NewAtomicLevelAt(zap.ErrorLevel)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	return cfg.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return quietCore{Core: c, closing: closing}
	}))
}

type quietCore struct {
	zapcore.Core
	closing *atomic.Bool
}

func (c quietCore) With(fields []zapcore.Field) zapcore.Core {
	return quietCore{Core: c.Core.With(fields), closing: c.closing}
}

func (c quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	switch {
	case !c.Enabled(e.Level):
		return ce
	case e.Message == "failed to update storage version": // retried by etcd
		return ce
	case c.closing.Load() && e.Message == "setting up serving from embedded etcd failed.":
		return ce
	}
	return ce.AddCore(e, c)
}
