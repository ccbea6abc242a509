# jobs: sources and programs of this folder
