// The line of the file a CSV record starts on, which failures.csv and the preview report. csv-parse counts the line
// a record ends on, and counts a CR LF inside a quoted cell as two lines (each of its two characters), so that count
// runs ahead after every such cell; this corrects it and steps back over the record's own line breaks.

/**
 * Returns a function to call with each record, in file order, with its cells and csv-parse's `lines` when it ended;
 * it returns the record's first line. `afterLast()` is the line after the last record seen: where an unreadable
 * record (one csv-parse skips, unseen here) starts, empty lines before it aside.
 */
export function recordLines() {
  /** Lines csv-parse has counted twice so far (a CR LF inside a quoted cell). */
  let overcounted = 0;
  let previous = 0;
  let lastLine = 0;
  const first = (cells: readonly string[], parsedLines: number): number => {
    // A record on one line, right after the one before: the common case, with nothing to scan.
    if (parsedLines - previous === 1) {
      previous = parsedLines;
      lastLine = parsedLines - overcounted;
      return lastLine;
    }
    previous = parsedLines;
    let breaks = 0;
    for (const cell of cells) {
      for (let i = 0; i < cell.length; i++) {
        const c = cell.charCodeAt(i);
        if (c === 0x0d) {
          breaks++;
          if (cell.charCodeAt(i + 1) === 0x0a) {
            overcounted++;
            i++;
          }
        } else if (c === 0x0a) breaks++;
      }
    }
    lastLine = parsedLines - overcounted;
    return lastLine - breaks;
  };
  return Object.assign(first, { afterLast: () => lastLine + 1 });
}
