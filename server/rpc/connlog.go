package rpc

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// connLog is a connection's logging: the engine's logger with the
// connection's fields (connFields). That *zap.Logger is made on the first
// line logged at an enabled level, because a zap logger With fields holds
// their encoded form in a buffer of its own (a kilobyte or more), which
// an idle connection, logging nothing at the configured level, need not
// hold.
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

// Logger returns the connection's logger (with its id as a field).
func (c *Conn) Logger() *zap.Logger {
	if lg := c.logger.Load(); lg != nil {
		return lg
	}
	lg := c.srv.log.With(c.connFields()...)
	if c.logger.CompareAndSwap(nil, lg) {
		return lg
	}
	return c.logger.Load()
}
