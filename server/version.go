package server

// Version is agentd's version, reported in initialize's userAgent and by
// `agentd version`. Release builds set it with
// -ldflags "-X github.com/agentd-dev/agentd/server.Version=…".
var Version = "0.1.0"
