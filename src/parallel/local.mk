# src/parallel: sources and programs of this folder
