package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ToolName is the name the model calls the tool by.
const ToolName = "apply_patch"

// grammar is the patch language in Lark syntax, for the freeform tool's
// constrained decoding. Every line ends with a newline except, optionally,
// the last.
const grammar = `start: "*** Begin Patch" NL operation+ "*** End Patch" NL?

operation: add_file | delete_file | update_file

add_file: "*** Add File: " PATH NL added_line*
delete_file: "*** Delete File: " PATH NL
update_file: "*** Update File: " PATH NL (move_to hunks? | hunks)
move_to: "*** Move to: " PATH NL

hunks: first_hunk hunk* | hunk+
first_hunk: change_line+ end_of_file?
hunk: hunk_header+ change_line+ end_of_file?
hunk_header: "@@" (" " TEXT)? NL
change_line: context_line | removed_line | added_line
context_line: " " TEXT? NL
removed_line: "-" TEXT? NL
added_line: "+" TEXT? NL
end_of_file: "*** End of File" NL

PATH: /[^\s\x00][^\r\n\x00]*/
TEXT: /[^\r\n]+/
NL: /\n/
`

// customDescription is what the model reads about the freeform tool; the
// grammar carries the exact syntax.
const customDescription = `Create, edit, rename and delete files by sending a patch as plain text (not JSON).

A patch starts with "*** Begin Patch" and ends with "*** End Patch". In between, one section per file:
- "*** Add File: <path>" followed by the new file's lines, each prefixed with "+".
- "*** Delete File: <path>" alone.
- "*** Update File: <path>", optionally followed by "*** Move to: <new path>", then hunks.

A hunk shows the lines around a change: " " (space) for an unchanged line, "-" for a line to remove, "+" for a line to add. Give about three unchanged lines before and after each change so it matches exactly one place. Start a hunk with "@@" or "@@ <line>", where <line> is a line above the change that occurs once (a function or class signature), when the nearby lines are not unique; repeat "@@ <line>" lines to narrow down step by step. Hunks must be in file order. End a hunk with "*** End of File" when it reaches the last line of the file.

Paths are relative to the working directory, or absolute. Example:
*** Begin Patch
*** Update File: src/app.py
@@ def greet(name):
-    print("hi")
+    print(f"hello, {name}")
*** Add File: NOTES.md
+# Notes
*** End Patch`

// functionDescription is the description of the function variant, for
// models without freeform tools.
const functionDescription = customDescription + `

Pass the whole patch, from "*** Begin Patch" to "*** End Patch", as the string parameter "input".`

// ToolSpecCustom returns the freeform (custom) tool definition for the
// Responses API: the patch is the call's raw input, constrained by a Lark
// grammar.
func ToolSpecCustom() json.RawMessage {
	return mustJSON(map[string]any{
		"type":        "custom",
		"name":        ToolName,
		"description": customDescription,
		"format": map[string]any{
			"type":       "grammar",
			"syntax":     "lark",
			"definition": grammar,
		},
	})
}

// ToolSpecFunction returns the function tool definition with a single
// string parameter "input" holding the patch.
func ToolSpecFunction() json.RawMessage {
	return mustJSON(map[string]any{
		"type":        "function",
		"name":        ToolName,
		"description": functionDescription,
		"strict":      false,
		"parameters": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"input": map[string]any{
					"type":        "string",
					"description": "The whole patch, from \"*** Begin Patch\" to \"*** End Patch\".",
				},
			},
			"required":             []string{"input"},
			"additionalProperties": false,
		},
	})
}

func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<path>" readable
	if err := enc.Encode(v); err != nil {
		panic(err) // static values: cannot happen
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// InputFromArguments extracts the patch from the JSON arguments of a call
// to the function variant.
func InputFromArguments(arguments string) (string, error) {
	var args struct {
		Input *string `json:"input"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return "", fmt.Errorf("apply_patch arguments are not a JSON object with a string \"input\": %w", err)
	}
	if args.Input == nil {
		return "", errors.New(`apply_patch arguments lack the string parameter "input"`)
	}
	return *args.Input, nil
}
