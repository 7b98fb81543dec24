# Rules of this stage are added here.
