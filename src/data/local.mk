# src/data: sources and programs of this folder
