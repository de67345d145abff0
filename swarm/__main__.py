from swarm.cli.main import main

raise SystemExit(main())
