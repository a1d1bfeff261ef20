// Package config loads agentd's configuration: <home>/config.toml with the
// reference's key names for what agentd supports, plus our own [server]
// table, with `--config key=value` overrides on top. It resolves the model
// provider into a core/model.Provider and reports unknown keys as warnings,
// never as failures.
package config
