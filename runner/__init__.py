"""Side effects: compiling, processes, ports and files. No Textual here."""
