package core

// UserInputKind names a kind of user input.
type UserInputKind string

const (
	InputText       UserInputKind = "text"
	InputImage      UserInputKind = "image"      // ImageURL
	InputLocalImage UserInputKind = "localImage" // Path (and ImageURL: see UserInput)
	InputSkill      UserInputKind = "skill"      // Name, Path
	InputMention    UserInputKind = "mention"    // Name, Path
)

// UserInput is one part of a user message.
type UserInput struct {
	Kind UserInputKind
	Text string
	// TextElements mark placeholders in Text (byte ranges), as the client
	// sent them.
	TextElements []TextElement
	// ImageURL is an image's URL; for a local image, the file's bytes as
	// a data URL once PrepareImages has read it, which only the model
	// sees (the turn's item keeps the path alone).
	ImageURL string
	Path     string
	Name     string
	Detail   string
}

// TextElement is a client-side annotation of a span of text.
type TextElement struct {
	Start, End  int
	Placeholder string
}

// TextInput returns a text input.
func TextInput(s string) UserInput { return UserInput{Kind: InputText, Text: s} }
