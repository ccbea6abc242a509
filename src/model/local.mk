# src/model: sources and programs of this folder
