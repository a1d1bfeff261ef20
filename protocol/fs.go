package protocol

// File system methods take absolute paths and carry bytes as base64.

// FsPathParams are the params of methods that take only a path
// (fs/readFile, fs/getMetadata, fs/readDirectory).
type FsPathParams struct {
	Path AbsPath `json:"path"`
}

// FsReadFileResponse is the result of fs/readFile.
type FsReadFileResponse struct {
	DataBase64 string `json:"dataBase64"`
}

// FsWriteFileParams are the params of fs/writeFile.
type FsWriteFileParams struct {
	Path       AbsPath `json:"path"`
	DataBase64 string  `json:"dataBase64"`
}

// FsCreateDirectoryParams are the params of fs/createDirectory; Recursive
// defaults to true.
type FsCreateDirectoryParams struct {
	Path      AbsPath `json:"path"`
	Recursive *bool   `json:"recursive,omitempty"`
}

// FsGetMetadataResponse is the result of fs/getMetadata.
type FsGetMetadataResponse struct {
	IsDirectory  bool  `json:"isDirectory"`
	IsFile       bool  `json:"isFile"`
	IsSymlink    bool  `json:"isSymlink"`
	CreatedAtMs  int64 `json:"createdAtMs"`
	ModifiedAtMs int64 `json:"modifiedAtMs"`
}

// FsReadDirectoryResponse is the result of fs/readDirectory.
type FsReadDirectoryResponse struct {
	Entries List[FsReadDirectoryEntry] `json:"entries"`
}

// FsReadDirectoryEntry is one directory entry.
type FsReadDirectoryEntry struct {
	FileName    string `json:"fileName"`
	IsDirectory bool   `json:"isDirectory"`
	IsFile      bool   `json:"isFile"`
}

// FsRemoveParams are the params of fs/remove; Recursive and Force default to true.
type FsRemoveParams struct {
	Path      AbsPath `json:"path"`
	Recursive *bool   `json:"recursive,omitempty"`
	Force     *bool   `json:"force,omitempty"`
}

// FsCopyParams are the params of fs/copy.
type FsCopyParams struct {
	SourcePath      AbsPath `json:"sourcePath"`
	DestinationPath AbsPath `json:"destinationPath"`
	Recursive       bool    `json:"recursive,omitempty"`
}

// FsWatchParams are the params of fs/watch.
type FsWatchParams struct {
	WatchID string  `json:"watchId"`
	Path    AbsPath `json:"path"`
}

// FsWatchResponse is the result of fs/watch: the canonical path.
type FsWatchResponse struct {
	Path AbsPath `json:"path"`
}

// FsUnwatchParams are the params of fs/unwatch.
type FsUnwatchParams struct {
	WatchID string `json:"watchId"`
}
