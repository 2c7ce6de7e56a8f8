from rippl_core.cli import main

main()
