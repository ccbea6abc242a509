# inputs: sources and programs of this folder
