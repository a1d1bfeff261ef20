package exec

// ModelEnv returns the environment overrides for commands the model runs.
// Nobody reads their screen: pagers would wait forever for a keypress and
// colour codes waste tokens. With a terminal, TERM stays as it is so
// that full-screen programs still work.
func ModelEnv(tty bool) map[string]string {
	env := map[string]string{
		"NO_COLOR":  "1",
		"PAGER":     "cat",
		"GIT_PAGER": "cat",
		"GH_PAGER":  "cat",
		"LANG":      "C.UTF-8",
		"LC_CTYPE":  "C.UTF-8",
		"LC_ALL":    "C.UTF-8",
	}
	if !tty {
		env["TERM"] = "dumb"
	}
	return env
}
