// Package rollout is the durable record of threads: one append-only JSONL
// file per thread (event sourcing), the writer that appends to it, the
// reader that rebuilds a thread from it, the store operations on the
// files (find, archive, unarchive, delete, rename, fork) and the index that
// answers thread/list.
//
// # File format
//
// A thread lives in <home>/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<threadId>.jsonl
// (UTC dates), the layout of the reference (codex), which shares the home:
// each program lists, reads, resumes and forks the other's threads. Each
// line is one record, in the reference's schema (format 2):
//
//	{"timestamp":"2026-11-29T23:01:17.115Z","type":"event_msg","turnId":"…","payload":{"type":"task_started",…}}
//
// turnId is agentd's (the reference ignores it): records of a turn carry
// it, so that rollbacks and forks know their turn without replaying
// boundaries. Payload fields are the reference's (snake_case); fields named
// agentd_* are agentd's, for what the reference's cannot say, and the
// reference ignores them. The types are:
//
//   - session_meta: the first line: id, timestamp, cwd, originator,
//     cli_version, source, model_provider, base_instructions {text}, git
//     {commit_hash, branch, repository_url}, forked_from_id; agentd_format
//     (2), agentd_model, agentd_reasoning_effort, agentd_thread_source,
//     agentd_developer_instructions. No history_mode: the reference reads
//     the turns of such a thread from its events (its "legacy" layout),
//     which is what agentd writes.
//   - turn_context: a turn's settings: turn_id, cwd, approval_policy,
//     sandbox_policy {type, …}, model, effort, summary.
//   - response_item: one model history item, its raw Responses-API JSON
//     exactly as the model saw it.
//   - compacted {message, replacement_history}: the history is replaced.
//   - event_msg, by payload type: task_started, task_complete (error for a
//     failed turn), turn_aborted, error, token_count, user_message,
//     agent_message, agent_reasoning and agent_reasoning_raw_content (one
//     per part), exec_command_begin/end, patch_apply_begin/end,
//     dynamic_tool_call_request/response, item_completed (plans, as a
//     typed Plan item), context_compacted, thread_rolled_back. Messages
//     and reasoning are written once complete; tool calls when they start
//     too, so that a crash leaves them shown (failed).
//
// Names are not in the rollout: like the reference, agentd appends them to
// <home>/session_index.jsonl ({"id","thread_name","updated_at"}; the last
// line of an id wins) and reads the reference's there.
//
// Readers also take the reference's newer layout (history_mode
// "paginated": an ordinal on each record, items as typed item_completed
// events) and agentd's format 1 (its own camelCase events: turnStarted,
// itemCompleted with items, …; thread_name and rollback records), so
// threads written before format 2 keep working. Records that name no turn
// belong to the turn open when they were written, and turns no record
// opened (the reference's oldest files) are rebuilt as the reference
// rebuilds them, with its item and turn names (item-1, rollout-7).
//
// Readers skip record and event types they do not know, so either program
// can add kinds. They also skip damaged lines (a torn last line after a
// crash, a torn line in the middle followed by good ones, a line another
// program wrote badly), never refusing a whole thread for them: reading a
// thread (thread/read, resume) warns of each; the index's summaries for
// thread/list skip them silently.
//
// # Bounded reads
//
// A path to read can come from a client (thread/resume's and
// thread/fork's path), so no read can be turned against the daemon. Only
// regular files are opened, and never in a way that blocks: the type is
// checked, the file opened non-blocking, and the opened file's type
// checked again (a named pipe swapped in meanwhile is refused too). The
// first line must be a session_meta record within MetaLineBytes (1 MiB),
// or the file is not a rollout (ErrNotRollout). Limits cap a line (64 MiB
// by default: ErrLineTooLong) and a file (1 GiB: ErrFileTooLarge); the
// index skips an over-long line instead, as it skips a damaged one. A line
// longer than the read buffer is measured while streaming past it and read
// whole only when within its cap, so memory holds one line, and a line
// over the cap costs none. Every read stops when its context ends (its
// client went away) and once Store.StopReads is called (shutdown).
// Failures are *FileError values: the path apart from the reason, so that
// a server can cut a client's path when it echoes it.
//
// A Store keeps the threads of large files (256 KiB and more) it read,
// without their history, 32 MiB of files at most, for as long as each
// file's device, inode, size and modification time stay as they were
// and for 30 s after their last use (readcache.go), and answers reads
// without history from them: a client that resumes a long thread, then
// pages through it or polls it, costs one parse, not one per request.
//
// Archived threads move to <home>/archived_sessions/ flat, keeping their
// file name; the name carries the creation date, so unarchiving puts the
// file back in its dated directory.
//
// # Durability
//
// A Recorder's file appears with the thread's first turn (deferred
// materialization: a thread that never runs a turn leaves no file). Records
// are written whole, by one writer goroutine per thread, as soon as it is
// idle and at every Flush; the file is fsynced when a turn ends and before
// Rollback and Persist return. Write errors keep the records in
// memory and are retried at the next barrier. A name is appended to the
// session index and fsynced before SetName returns.
//
// # Index
//
// thread/list is answered from an in-memory index of per-file summaries
// (meta, preview, turn statuses, last model; names come from the session
// index, read again as it grows). The listable summaries are kept sorted,
// per listing (live, archived) and per key (creation time, modification
// time), in chunked sorted lists: a page is a seek to the cursor and a
// step per entry, whatever the number of threads. Filters that the orders
// do not follow (model providers, cwd, source kinds, a search) are checked
// on the entries walked, until the page is full: a filter that matches few
// threads walks further, a search that matches none walks them all.
//
// The index follows the files, not the other way round: every call first
// takes the changes since the last one. Where it can, it watches the home
// (inotify: one watch per directory under the roots), and the events, with
// this process's own writes, name the files to stat and read again (from
// where their last scan stopped when they only grew) and the directories
// to list again; a call drains the event queue itself, so it sees every
// change made before it began. Where it cannot watch (not Linux, the limit
// of watches reached), each call stats every directory (their mtimes say
// when files were added, moved or deleted), files modified within two
// seconds of their reading are checked again until they settle, and a
// background pass re-stats every file every Options.IndexRevalidate
// (appends by other processes). When watching, that pass runs every five
// minutes, as a safety net (a network file system written from another
// host sends no events).
//
// The index is cached between runs in <home>/rollout-index.v3.bin: a
// binary file of the summaries and the directories' listings, its strings
// stored once each, checked by a CRC, loaded without a decoder per field
// and in parallel parts. The store builds the index in the background a
// moment after it is opened (a starting daemon answers its first
// handshakes first): the cache, then the directories whose mtime changed
// since it was saved are listed again, and the files added are read. A
// first call that comes earlier builds it, and one that comes during the
// build waits for it, and helps with the reading, unless the file names
// can serve it (below). The files the cache
// brought are re-stat'ed in the background a second after; until that
// ends, a page stats its own entries (and reads again those that
// changed), and a listing by modification time waits for it.
//
// Without the cache (deleted, damaged, of another version or home), every
// file is read again: the files are the only truth, the cache only saves
// reading them. A build (or a batch of more than 256 new files) reads each
// file's first line only, the session's meta: enough to sort it by
// creation time and to filter it by cwd, provider and source; it reads the
// 101 newest live files (by the time in their names) whole, and first. A
// page reads the rest of the files of the entries it reaches (whether a
// thread has a turn, its preview for a search, the turns' statuses for the
// summary), and the background reads the others', at half of one
// processor, a second after the build.
//
// Until the build ends, a listing by creation time is not kept waiting for
// it (unless the store was opened without the background build): its pages
// are served from the file names (index_first.go), as the reference serves
// all of its pages. A name carries the second its thread was created, and
// the dated directories sort the names, so the walk lists the directories
// newest (or oldest) first, only those the page reaches, and reads the
// files it reaches whole, until no file left can come before the page's
// last: about as many files as the page has, whatever the number of
// threads. The creation time that orders a listing is the meta's, which
// agentd's names carry to the second (UTC) and the reference's in local
// time; the walk trusts the meta's time to be within a window around the
// name's (UTC and every offset the local zone had in the last year),
// places a file only once no unread file can come before it, checks every
// file it reads against the window, and every name it lists against its
// directory's date. The pages, and their cursors, are the index's: a
// cursor continues on the index once it is built. The walk gives up, and
// the page waits for the index, where the names cannot say the order (a
// rollout outside the dated directories, a file whose meta disagrees with
// its name), when it would read more than 256 files (or four pages: a
// filter that matches few threads), and for a listing by modification
// time, which only the index can sort. A walk's listings and summaries are
// kept until the build ends (each checked by its mtime and stat before it
// is used again), so that a page asked for again is not read again, and
// the build takes them instead of reading their files. With a cache of up
// to 1.5 MiB (some 6,000 threads), which loads about as fast as a walk
// reads a page or faster, the pages wait for the index instead. What the walk cannot check,
// it trusts: a file whose meta's time is outside the window, in a
// directory the page did not reach, would be missed or misplaced until the
// index is built.
//
// SQLite (modernc.org/sqlite) was considered and not chosen: the files
// stay the only truth either way, so a database would still need the same
// staleness checks against the directory tree, while adding a large
// dependency, a second file format to migrate and WAL files in the user's
// home.
package rollout
