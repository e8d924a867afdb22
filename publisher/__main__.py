from publisher.cli import main

main()
