package patch

// validCorpus holds well-formed patches used by the preview, fuzz and
// benchmark tests, with the files they apply to.
var validCorpus = []struct {
	name  string
	files map[string]string
	patch string
}{
	{
		name:  "add",
		patch: "*** Begin Patch\n*** Add File: hello.txt\n+hello world\n*** End Patch\n",
	},
	{
		name:  "update with anchors and eof",
		files: map[string]string{"src/app.py": "import os\n\ndef greet(name):\n    print(\"hi\")\n\n\ndef main():\n    greet(\"x\")\n"},
		patch: "*** Begin Patch\n*** Update File: src/app.py\n@@ def greet(name):\n-    print(\"hi\")\n+    print(f\"hello, {name}\")\n\n@@ def main():\n     greet(\"x\")\n+    return 0\n*** End of File\n*** End Patch",
	},
	{
		name:  "move, delete, add",
		files: map[string]string{"a.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n"},
		patch: "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b/a.txt\n one\n-two\n+2\n*** Delete File: gone.txt\n*** Add File: docs/new.md\n+# New\n+\n+text\n*** End Patch\n",
	},
	{
		name:  "heredoc wrapped pure rename",
		files: map[string]string{"x": "x\n"},
		patch: "<<'EOF'\n*** Begin Patch\n*** Update File: x\n*** Move to: y\n*** End Patch\nEOF\n",
	},
}
