package rpc

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// connLog is a connection's logging: the engine's logger with the
// connection's fields (connFields). A zap logger With fields holds their
// encoded form in a buffer of its own (a kilobyte or more), which an idle
// connection need not hold: a connection keeps no logger, and makes one
// (lazily encoded) for each line it logs at an enabled level, which is a
// few in its life at the default level.
type connLog struct{ c *Conn }

func (l connLog) Debug(msg string, fields ...zap.Field) { l.log(zapcore.DebugLevel, msg, fields) }
func (l connLog) Info(msg string, fields ...zap.Field)  { l.log(zapcore.InfoLevel, msg, fields) }
func (l connLog) Warn(msg string, fields ...zap.Field)  { l.log(zapcore.WarnLevel, msg, fields) }
func (l connLog) Error(msg string, fields ...zap.Field) { l.log(zapcore.ErrorLevel, msg, fields) }

func (l connLog) log(level zapcore.Level, msg string, fields []zap.Field) {
	if !l.c.srv.log.Core().Enabled(level) {
		return
	}
	l.c.Logger().Log(level, msg, fields...)
}

// Logger returns the connection's logger (with its id as a field). The
// fields are encoded only if something is logged with it.
func (c *Conn) Logger() *zap.Logger {
	return c.srv.log.WithLazy(c.connFields()...)
}
