# src/pipeline: sources and programs of this folder
