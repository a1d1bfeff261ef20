// Package catalog knows which tools each model is offered: the shell tool
// family it was trained on (shell, shell_command, the hosted local_shell,
// exec_command/write_stdin, or none) and the form of apply_patch (the
// freeform custom tool, a JSON function, or none).
//
// The built-in catalogue lists the models the reference (codex 0.169)
// ships with; model_catalog_json replaces it. Tools resolves the family
// for a model name with the feature flags applied, as the reference's tool
// configuration does. What is offered does not limit what the core
// accepts: a model that calls a form it was not offered is still served.
package catalog
