// Package utility serves the methods that need no thread: command/exec,
// fs/*, fuzzyFileSearch, config/read and the config writes. Processes and
// watches belong to the connection that started them and end with it.
package utility
