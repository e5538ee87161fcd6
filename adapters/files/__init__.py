"""The files backend (markdown files are the record): layout, format, frontmatter, directory, store, catalog."""
